from setuptools import setup

package_name = 'p2os_driver'

setup(
    name=package_name,
    version='0.2.0',
    packages=[package_name],
    package_data={package_name: ['worlds/*.map']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/worlds', ['p2os_driver/worlds/office.map']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Legacy robot drivers maintainers',
    maintainer_email='maintainers@legacy-robots.dev',
    description='P2OS robot driver (Pioneer 2, PeopleBot, AmigoBot) over serial or TCP, '
    'with an emulator and a simulated world.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'p2os_driver = p2os_driver.node:main',
            'p2os_emulator = p2os_driver.emulator:main',
            'world_to_map = p2os_driver.world:world_to_map_main',
        ],
        'legacy_robots.robots': ['p2os = p2os_driver.plugin:PLUGIN'],
    },
)
